// Types of the stcheck npm package (js/lib/stcheck.js). Records are the `data` of the
// records `stcheck --json` writes: docs/json-output.md in the repository is their schema.

/** How an option is checked: the core resolves them once (the same rules as the CLI's flags). */
export interface Options {
  /**
   * Whose verdict decides: "strict" (default) or "portable". "reference" is a UsageError in
   * this build (the reference crate compiled for wasm32 decides with 32-bit sizes).
   */
  profile?: "strict" | "portable" | "reference";
  /** Scan the data region (DATA-* rules); reads the whole file. */
  deep?: boolean;
  /** The SHA-256 of the whole file (implies deep). */
  sha256?: boolean;
  /**
   * The SHA-256 (64 hex digits) the file must have: one more published id, compared with the
   * file's SHA-256 (INTEGRITY-SHA256 otherwise, the source `expectSha256` named in the
   * message and in `published_sha256`); implies sha256. A UsageError for checkIndex (a set
   * has several files).
   */
  expectSha256?: string;
  /** Every warning an error. */
  denyWarnings?: boolean;
  /** Any NaN or infinity an error (implies deep). */
  denyNonfinite?: boolean;
  /** Warning rules made errors, by ID. */
  deny?: string[];
  /** Warning rules not reported, by ID (an error rule is a UsageError). */
  allow?: string[];
  /** Left out of the WebAssembly build (a UsageError): see profile. */
  compareReference?: boolean;
  /** The readers of the portable profile (implies it). */
  portableTo?: string[];
  /** A reader's refusal is an error (portable profile). */
  refusalsAreErrors?: boolean;
  /** The largest header accepted, in bytes. */
  maxHeaderSize?: number;
  /** Warnings kept per rule. */
  maxWarningsPerRule?: number;
  /** Include `tensor_list` and `metadata` in the record (`stcheck -v --json`). */
  verbose?: boolean;
  /** The `path` shown in the record. */
  path?: string;
  /** Throw a ValidationError instead of returning an invalid record. */
  throwOnInvalid?: boolean;
}

export interface Progress {
  /** Bytes read so far (of this file or shard). */
  bytes: number;
  /** The file's length. */
  total: number | null;
  /** The shard being read (checkIndex). */
  shard?: string;
}

export interface StreamOptions extends Options {
  /** Called after each chunk read. */
  onProgress?: (p: Progress) => void;
  /** The largest Blob read, in bytes (default 8 MiB; a URL's body is streamed as it arrives). */
  chunkSize?: number;
}

export interface UrlOptions extends StreamOptions {
  /** The fetch to use (default: globalThis.fetch). */
  fetch?: typeof fetch;
  /** Extra request headers: in Node sent only to the URL's own origin (redirects are followed
   * by the wrapper); in a browser, the browser's redirect rules apply. */
  headers?: HeadersInit;
  /** The first request's length in bytes (default 64 KiB). */
  firstFetch?: number;
  signal?: AbortSignal;
}

export interface IndexOptions extends StreamOptions {
  /** The `*.safetensors` names in the index's directory (for INDEX-SHARD-UNLISTED). */
  listing?: string[];
}

export interface Finding {
  rule: string | null;
  kind: "malformed" | "invalid" | null;
  severity: "error" | "warning";
  promoted_warning: boolean;
  offset: number | null;
  offset_in: string | null;
  tensor: string | null;
  shard: string | null;
  message: string;
  cause: Finding | null;
}

export interface DtypeTotal {
  dtype: string;
  tensors: number;
  parameters: number;
  bytes: number;
}

export interface TensorRecord {
  name: string;
  dtype: string;
  shape: number[];
  data_offsets: [number, number];
  file_offsets: [number, number];
  elements: number;
  header_offset: number;
}

/** The record of one file (`"type": "file"`); fields as in docs/json-output.md. */
export interface FileRecord {
  path: string;
  status: "valid" | "invalid";
  mode?: string | null;
  tensors?: number;
  parameters?: number;
  header_len?: number | null;
  by_dtype?: DtypeTotal[];
  metadata_form?: string;
  error: Finding | null;
  warnings: Finding[];
  warning_counts?: Record<string, number>;
  omitted_warnings?: number;
  metadata?: Record<string, string> | null;
  tensor_list?: TensorRecord[];
  deep?: {
    bytes_scanned: number | null;
    sha256: string | null;
    non_finite: { tensor: string; dtype: string; nan: number; pos_inf: number; neg_inf: number }[];
    non_finite_tensors: number;
  };
  reference?: Record<string, unknown>;
  portable?: Record<string, unknown>;
  url?: string;
  cost?: { requests: number; bytes: number; redirects: number; retries: number };
  /** Every id published for the file and compared with its SHA-256, by source. */
  published_sha256?: { source: string; sha256: string }[];
  [field: string]: unknown;
}

/** The record of a sharded set (`"type": "index"`). */
export interface IndexRecord {
  path: string;
  shards: (FileRecord & { name: string } | { name: string; path: string; status: "missing"; error: Finding })[];
  status: "valid" | "invalid" | "io_error";
  tensors?: number;
  parameters?: number;
  by_dtype?: DtypeTotal[];
  total_size?: number | null;
  computed_size?: number | null;
  errors?: Finding[];
  warnings?: Finding[];
  omitted_errors?: number;
  io_error?: string;
  read_error?: string;
  [field: string]: unknown;
}

export interface RuleText {
  rule: string;
  severity: "error" | "warning";
  kind: "malformed" | "invalid";
  summary: string;
  statement: string;
  rationale: string;
  section: string;
}

export class StcheckError extends Error {}
export class UsageError extends StcheckError {}
export class NotCheckedError extends StcheckError {
  /** The records' `read_error` code: `io`, `not_found`, `changed`, ...; for a URL also
   * `http_status`, `timeout`, `tls`. */
  reason: string;
  /** With `reason` `http_status`: the HTTP status the server answered with. */
  httpStatus?: number;
}
export class ValidationError extends StcheckError {
  rule: string | null;
  kind: string | null;
  offset: number | null;
  tensor: string | null;
  shard: string | null;
  record: FileRecord | IndexRecord;
}

export type Bytes = Uint8Array | ArrayBuffer | ArrayBufferView;

/** Bytes read by position: a shard behind range requests, a file handle. */
export interface RangeSource {
  size: number;
  name?: string;
  read(pos: number, n: number): Uint8Array | ArrayBuffer | Promise<Uint8Array | ArrayBuffer>;
}

/** Check the length field and header (and the data, when `bytes` is the whole file). */
export function checkHeader(bytes: Bytes, fileLength?: number | null, options?: Options): FileRecord;
export function checkHeader(bytes: Bytes, options?: Options): FileRecord;
/** Check a Blob or File: two slices for a header check, the data streamed when deep. */
export function checkBlob(blob: Blob | Bytes | RangeSource, options?: StreamOptions): Promise<FileRecord>;
/** Check a file on an HTTP(S) server with range requests. */
export function checkUrl(url: string | URL, options?: UrlOptions): Promise<FileRecord>;
/** Check a sharded set: its index's bytes and a way to read each shard (null: missing). */
export function checkIndex(
  indexBytes: Bytes,
  readShard: (name: string) => Blob | Bytes | RangeSource | null | undefined | Promise<Blob | Bytes | RangeSource | null | undefined>,
  options?: IndexOptions & { path?: string },
): Promise<IndexRecord>;
/** Throw a ValidationError for a record that is not valid; return it otherwise. */
export function assertValid<R extends FileRecord | IndexRecord>(record: R): R;
/** A rule's text in SPEC.md, or null for an unknown rule. */
export function explain(rule: string): RuleText | null;
/** Every rule ID of SPEC.md. */
export function rules(): string[];
export const version: string;
