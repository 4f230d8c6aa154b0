//! Targets over the checker's options and the tables beside it: `deep_scan`, `portable`,
//! `reference_profile`, `file_source`, `rule_table` and `reader_table`. Each takes any bytes
//! (a file, or text) and runs the one [`stcheck::Checker`] under the options the byte-level
//! targets leave off, comparing the ways the same answer can be reached.

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::sync::OnceLock;

use stcheck::portable::{self, Options, ReaderTable};
use stcheck::{Checked, Checker, Profile, ReadMode};

use crate::*;

/// The chunk sizes a fed checker gets its bytes in (cycled): short, odd and block-sized.
const PIECES: [usize; 6] = [1, 7, 3, 64, 13, 4096];

/// Feed `file` to a fresh checker of `config` in [`PIECES`], declaring its length or not.
fn fed(config: &Config, file: &[u8], with_len: bool) -> Checked<'static> {
    let mut checker = Checker::new(config);
    if with_len {
        checker = checker.with_len(file.len() as u64);
    }
    let mut rest = file;
    let mut step = 0;
    while !rest.is_empty() {
        let k = PIECES[step % PIECES.len()].min(rest.len());
        step += 1;
        let (piece, tail) = rest.split_at(k);
        rest = tail;
        let need = checker.feed(piece);
        assert_eq!(checker.need(), need);
        if need == stcheck::Need::Done {
            assert_eq!(
                checker.wanted(),
                None,
                "FUZZ FINDING: a done checker wants more"
            );
            break;
        }
    }
    checker.finish().into_owned()
}

/// Every finding of a verdict printed, as a face prints it: its message and offset must be
/// within the input.
fn print_verdict(checked: &Checked<'_>, len: u64) {
    match &checked.verdict {
        Err(e) => {
            let text = e.to_string();
            assert!(!text.is_empty(), "FUZZ FINDING: an error prints as nothing");
            assert!(
                e.offset() <= len,
                "FUZZ FINDING: error beyond the input: {e}"
            );
            assert_eq!(Rule::from_id(e.rule().id()), Some(e.rule()));
        }
        Ok(r) => {
            for w in r.warnings() {
                assert!(
                    w.offset() <= len && !w.to_string().is_empty(),
                    "FUZZ FINDING: warning beyond the input: {w}"
                );
            }
            let counted: u64 = r.warning_counts().map(|(_, n)| n).sum();
            assert_eq!(
                counted,
                r.warnings().len() as u64 + r.omitted_warnings(),
                "FUZZ FINDING: warning counts and kept warnings disagree"
            );
            let totals: u64 = r.totals_by_dtype().iter().map(|t| t.tensors).sum();
            assert_eq!(totals, r.len() as u64, "FUZZ FINDING: dtype totals");
            assert_eq!(r.is_empty(), r.tensors().next().is_none());
            for t in r.tensors() {
                // Names are unique: looked up by name, each is itself.
                assert_eq!(
                    r.tensor(t.name).map(|u| (u.begin, u.end)),
                    Some((t.begin, t.end)),
                    "FUZZ FINDING: tensor {:?} looked up by name",
                    t.name
                );
                assert_eq!(
                    t.dtype.is_float(),
                    float(t.dtype),
                    "FUZZ FINDING: {}",
                    t.dtype
                );
            }
            assert!(r.metadata_len() <= len && !r.metadata_form().as_str().is_empty());
            let _ = r.metadata().count();
            let _ = r.parameters();
        }
    }
}

/// The float types by their names: `F*`, `BF16`, `C64`.
fn float(d: Dtype) -> bool {
    let name = d.to_string();
    name.starts_with('F') || name == "BF16" || name == "C64"
}

/// The `deep_scan` target: the deep scan (every dtype's value checks, BOOL bytes, NaN and
/// infinities, polyglot signatures) and the hash give the same verdict, counts and hash on one
/// thread, split across threads, and fed in pieces; `deny_nonfinite` rejects exactly the
/// valid files with a non-finite value; the warning cap keeps the counts.
pub fn check_deep_scan(file: &[u8]) {
    let len = file.len() as u64;
    let one = Config::default().deep(true).sha256(true);
    let single = Checker::check_slice(&one, file);
    print_verdict(&single, len);
    let key = |c: &Checked<'_>| (outcome(&c.verdict), c.deep.clone(), c.sha256);
    let split = one.clone().threads(3).min_bytes_per_thread(1);
    assert_eq!(
        key(&Checker::check_slice(&split, file)),
        key(&single),
        "FUZZ FINDING: the deep scan split across threads differs from one thread"
    );
    for with_len in [true, false] {
        assert_eq!(
            key(&fed(&one, file, with_len)),
            key(&single),
            "FUZZ FINDING: the deep scan fed in pieces differs (length declared: {with_len})"
        );
    }
    if let (Ok(report), Some(deep)) = (&single.verdict, &single.deep) {
        assert_eq!(
            deep.bytes_scanned,
            report.data_len(),
            "FUZZ FINDING: bytes scanned"
        );
        assert!(
            deep.non_finite_tensors >= deep.non_finite.len() as u64
                && deep.nan + deep.pos_inf + deep.neg_inf
                    >= deep.non_finite.iter().map(|t| t.non_finite()).sum::<u64>(),
            "FUZZ FINDING: non-finite counts: {deep:?}"
        );
    }
    if let (Ok(report), Some(hash)) = (&single.verdict, &single.sha256) {
        check_integrity(report, hash);
    }
    if let (Ok(_), Some(hash)) = (&single.verdict, &single.sha256) {
        // The same decision through the checked result: an id that is not the file's hash
        // rejects it.
        let mut other = Checker::check_slice(&one, file);
        other.compare_published(&[("a server", "00")]);
        assert!(other.verdict.is_err() && !other.is_valid());
        let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
        let mut same = Checker::check_slice(&one, file);
        same.compare_published(&[("a server", &hex)]);
        assert!(same.is_valid(), "FUZZ FINDING: the file's own hash refused");
    }
    let nonfinite = single
        .deep
        .as_ref()
        .is_some_and(|d| d.non_finite_tensors > 0);
    let denied = Checker::check_slice(&Config::default().deny_nonfinite(true), file);
    match (&single.verdict, &denied.verdict) {
        (Ok(_), Err(e)) => assert!(
            nonfinite && e.rule() == Rule::DataNonFinite,
            "FUZZ FINDING: deny_nonfinite rejected a valid file with {e}"
        ),
        (Ok(_), Ok(_)) => assert!(
            !nonfinite,
            "FUZZ FINDING: deny_nonfinite accepted a file with a non-finite value"
        ),
        // A denied non-finite value may come before the error in file order.
        (Err(a), Err(b)) => assert!(
            a == b || (nonfinite_before(b, a)),
            "FUZZ FINDING: deny_nonfinite changed the error {a} into {b}"
        ),
        (Err(e), Ok(_)) => panic!("FUZZ FINDING: deny_nonfinite accepted a file rejected with {e}"),
    }
    let capped = Checker::check_slice(&one.clone().max_warnings_per_rule(1), file);
    if let (Ok(all), Ok(few)) = (&single.verdict, &capped.verdict) {
        let counts = |r: &Report<'_>| r.warning_counts().collect::<Vec<_>>();
        assert_eq!(
            counts(all),
            counts(few),
            "FUZZ FINDING: the cap changed the counts"
        );
        let mut seen = HashSet::new();
        for w in few.warnings() {
            assert!(
                seen.insert(w.rule()),
                "FUZZ FINDING: two warnings of {} kept under a cap of one",
                w.rule()
            );
        }
    } else {
        assert_eq!(
            outcome(&capped.verdict).is_accept(),
            single.verdict.is_ok(),
            "FUZZ FINDING: the warning cap changed the verdict"
        );
    }
}

/// `INTEGRITY-SHA256` with the file's metadata values as the published ids (what a server
/// says is text from elsewhere): the file's own hash confirms it; any other id is a finding
/// that names the hash and quotes no control character.
fn check_integrity(report: &Report<'_>, hash: &[u8; 32]) {
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    assert!(Error::sha256_published(hash, &[("the test", &hex.to_ascii_uppercase())]).is_none());
    let said: Vec<(String, String)> = report
        .metadata()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let published: Vec<(&str, &str)> = said.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let confirmed = !published.is_empty()
        && published
            .iter()
            .all(|(_, id)| id.eq_ignore_ascii_case(&hex));
    match Error::sha256_published(hash, &published) {
        None => assert!(
            confirmed || published.is_empty(),
            "FUZZ FINDING: ids {published:?} taken for {hex}"
        ),
        Some(e) => {
            assert!(!confirmed, "FUZZ FINDING: the file's own hash refused: {e}");
            assert!(e.message().contains(&hex) && e.rule() == Rule::IntegritySha256);
        }
    }
    for (_, id) in &published {
        if let Some(e) = Error::sha256_published(hash, &[("a server", id)]) {
            assert!(
                !e.message().chars().any(char::is_control),
                "FUZZ FINDING: a published id put a control character in {e}"
            );
        }
    }
}

/// Whether `denied` is a denied non-finite value no later in the file than `error`.
fn nonfinite_before(denied: &Error, error: &Error) -> bool {
    denied.rule() == Rule::DataNonFinite && denied.offset() <= error.offset()
}

impl Outcome {
    /// Whether the verdict accepts.
    pub fn is_accept(&self) -> bool {
        matches!(self, Outcome::Accept { .. })
    }
}

/// The built-in reader table (it loads: a test of the core checks it).
fn builtin() -> &'static ReaderTable {
    ReaderTable::builtin().expect("the built-in reader table loads")
}

/// The `portable` target: a file strict accepts gets a portable answer, strict rejects none;
/// the answer is the one [`portable::check_file`] gives, whether the checker had the file
/// whole or in pieces; its findings are `PORTABLE-*` rules within the file; refusals as
/// errors only add findings; each reader alone finds a subset of what all find.
pub fn check_portable(file: &[u8]) {
    let len = file.len() as u64;
    let table = builtin();
    let all = Options::all(table);
    let mut strict_refusals = all.clone();
    strict_refusals.refusals_are_errors = true;
    let mut answers = Vec::new();
    for options in [all.clone(), strict_refusals] {
        let config = Config::default().portable(Some(options.clone()));
        let whole = Checker::check_slice(&config, file);
        print_verdict(&whole, len);
        assert_eq!(
            whole.portable.is_some(),
            whole.verdict.is_ok(),
            "FUZZ FINDING: a portable answer exactly for the files strict accepts"
        );
        let streamed = fed(&config, file, false);
        assert_eq!(
            (outcome(&streamed.verdict), &streamed.portable),
            (outcome(&whole.verdict), &whole.portable),
            "FUZZ FINDING: the portable answer fed in pieces differs"
        );
        let Ok(report) = &whole.verdict else {
            assert!(!whole.is_valid_under(Profile::Portable));
            continue;
        };
        let answer = whole.portable.clone().expect("checked above");
        assert_eq!(
            answer,
            portable::check_file(table, report, &options),
            "FUZZ FINDING: the checker's portable answer is not check_file's"
        );
        assert_eq!(
            whole.is_valid_under(Profile::Portable),
            answer.is_portable()
        );
        assert_eq!(answer.support().len(), options.chosen().len());
        assert!(!answer.support_line().is_empty());
        check_portable_claims(table, &answer, report, None);
        for f in answer.findings() {
            assert!(
                f.rule().is_portable() && f.finding().offset() <= len,
                "FUZZ FINDING: portable finding {:?} at {} of a {len}-byte file",
                f.rule(),
                f.finding().offset()
            );
            assert!(table.behaviours().iter().any(|b| b.id() == f.behaviour()));
            let _ = (f.reader(), f.version(), f.effect().as_str(), f.shard());
        }
        answers.push(answer);
    }
    if let [notes, errors] = &answers[..] {
        assert!(
            errors.findings().len() >= notes.findings().len(),
            "FUZZ FINDING: refusals as errors dropped a finding"
        );
        assert!(!errors.is_portable() || notes.is_portable());
        // One reader at a time: never a finding that all the readers together do not have.
        for reader in table.readers() {
            let Ok(one) = Options::readers(table, &[reader.id()]) else {
                panic!(
                    "FUZZ FINDING: the table's own reader {} is unknown",
                    reader.id()
                );
            };
            let report = stcheck::validate(file, &Config::default()).expect("accepted above");
            let alone = portable::check_file(table, &report, &one);
            for f in alone.findings() {
                assert!(
                    notes
                        .findings()
                        .iter()
                        .any(|g| g.behaviour() == f.behaviour())
                        || notes.omitted() > 0,
                    "FUZZ FINDING: reader {} alone finds {} which all readers do not",
                    reader.id(),
                    f.behaviour()
                );
            }
        }
    }
}

/// What a portable answer claims agrees with the table: every finding prints its rule and
/// comes from a behaviour whose condition matches the file (`Behaviour::matches_file`; for
/// a set, a shard's `report`) or the set's `index` (`matches_index`); every refusal and
/// misreading a reader's support lists is such a behaviour, and a misreading has its findings.
fn check_portable_claims(
    table: &ReaderTable,
    answer: &portable::PortableReport,
    report: &Report<'_>,
    index: Option<&dyn portable::IndexView>,
) {
    let matches = |id: &str| {
        let b = table
            .behaviours()
            .iter()
            .find(|b| b.id() == id)
            .unwrap_or_else(|| panic!("FUZZ FINDING: behaviour {id} is not in the table"));
        match (b.condition().is_index(), index) {
            (true, Some(index)) => b.matches_index(index) && !b.matches_file(report),
            (true, None) => false,
            (false, _) => b.matches_file(report) && index.is_none_or(|i| !b.matches_index(i)),
        }
    };
    for f in answer.findings() {
        assert!(
            f.to_string().contains(f.rule().id()) && matches(f.behaviour()),
            "FUZZ FINDING: finding {f} of a behaviour that does not match"
        );
    }
    for s in answer.support() {
        assert_eq!(
            s.loads(),
            s.refusals().is_empty() && s.misreadings().is_empty()
        );
        assert!(table.reader(s.reader().id()).is_some());
        for r in s.refusals() {
            assert!(
                matches(&r.behaviour) && !r.reason.is_empty(),
                "FUZZ FINDING: refusal {r:?} of a behaviour that does not match"
            );
        }
        for m in s.misreadings() {
            assert!(
                matches(m)
                    && (answer.findings().iter().any(|f| f.behaviour() == m)
                        || answer.omitted() > 0),
                "FUZZ FINDING: misreading {m} without its findings"
            );
        }
    }
}

/// The `reference_profile` target: the reference crate's verdict on the length field and the
/// header over a sparse file of the file's length (what a fed checker of known length, a
/// remote file or a file read without mapping gives) is its verdict on the whole buffer; the
/// reference profile follows that verdict, and a strict rejection of a file the reference
/// loads names its documented divergence.
pub fn check_reference_profile(file: &[u8]) {
    quiet_reference_panics();
    let len = file.len() as u64;
    let config = Config::default().reference(true);
    let whole = Checker::check_slice(&config, file);
    print_verdict(&whole, len);
    let head = fed(&config, file, true);
    assert_eq!(
        outcome(&head.verdict),
        outcome(&whole.verdict),
        "FUZZ FINDING: the strict verdict changed with the reference asked for"
    );
    // The crate's error names one of the faulty tensors, not always the same one (it walks a
    // hash map): the verdicts are compared by what they decide and the tensors they load.
    let decided = |v: &Verdict| match v {
        Verdict::Accept(t) => Some(t.clone()),
        _ => None,
    };
    if let (Some(a), Some(b)) = (&whole.reference, &head.reference) {
        assert_eq!(
            (decided(a), matches!(a, Verdict::Panic(_))),
            (decided(b), matches!(b, Verdict::Panic(_))),
            "FUZZ FINDING: the reference's verdict from the head differs from the whole buffer's"
        );
    }
    if let Some(v) = &whole.reference {
        assert_eq!(whole.is_valid_under(Profile::Reference), v.accepts());
        if let (Err(e), true) = (&whole.verdict, v.accepts()) {
            assert!(
                whole.reference_divergence().is_some(),
                "FUZZ FINDING: strict rejects with {e}, the reference loads it, and no \
                 divergence is documented for {}",
                e.rule()
            );
        }
    }
    // Without a declared length, the fed checker cannot give the reference verdict and says so.
    if fed(&config, file, false).reference.is_none() {
        let mut checker = Checker::new(&config);
        checker.feed(file);
        assert!(
            checker.try_finish().is_err(),
            "FUZZ FINDING: a reference verdict asked for, not computed, and no error"
        );
    }
}

/// Keep the process's panic hook from hearing of panics inside the reference crate, which
/// [`stcheck::reference`] catches (a `Verdict::Panic`, e.g. its unchecked length addition under
/// overflow checks): libFuzzer's hook aborts the process on any panic, caught or not. Every
/// other panic still reaches the hook that was there. Installed once.
fn quiet_reference_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let in_reference = info
                .location()
                .is_some_and(|l| l.file().contains("/safetensors-"));
            if !in_reference {
                previous(info);
            }
        }));
    });
}

/// The one scratch file of this process, unlinked as soon as it is made.
pub(crate) fn scratch() -> &'static std::sync::Mutex<File> {
    static FILE: OnceLock<std::sync::Mutex<File>> = OnceLock::new();
    FILE.get_or_init(|| {
        let path =
            std::env::temp_dir().join(format!(".stcheck-fuzz-file-source-{}", std::process::id()));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .expect("a scratch file in the temporary directory");
        let _ = std::fs::remove_file(&path);
        std::sync::Mutex::new(file)
    })
}

/// The `file_source` target: the input written to a file and checked from it, mapped, read in
/// ranges (split across threads for the deep scan) and streamed, gives the verdict, deep report
/// and hash of the same bytes checked in memory; so does [`stcheck::check_reader`].
pub fn check_file_source(data: &[u8]) {
    let guard = scratch().lock().unwrap_or_else(|e| e.into_inner());
    let mut file: &File = &guard;
    file.set_len(0).expect("truncate the scratch file");
    file.seek(SeekFrom::Start(0)).expect("seek");
    file.write_all(data).expect("write the scratch file");
    let key = |c: &Checked<'_>| (outcome(&c.verdict), c.deep.clone(), c.sha256);
    for config in [
        Config::default(),
        Config::default()
            .deep(true)
            .sha256(true)
            .threads(2)
            .min_bytes_per_thread(1),
    ] {
        let memory = key(&Checker::check_slice(&config, data));
        for mode in [ReadMode::Mmap, ReadMode::Read, ReadMode::Stream] {
            // A stream is read from the file's position on.
            file.seek(SeekFrom::Start(0)).expect("seek");
            assert_eq!(mode.as_str().parse::<ReadMode>().ok(), Some(mode));
            match stcheck::check_file(file, &config, mode, |c| key(&c)) {
                Ok(got) => assert_eq!(
                    got,
                    memory,
                    "FUZZ FINDING: checked from a file ({}) differs from memory",
                    mode.as_str()
                ),
                Err(e) => panic!("FUZZ FINDING: reading the scratch file ({mode:?}): {e}"),
            }
        }
        match stcheck::check_reader(data, &config) {
            Ok(c) => assert_eq!(key(&c), memory, "FUZZ FINDING: check_reader differs"),
            Err(e) => panic!("FUZZ FINDING: check_reader on a slice: {e}"),
        }
    }
}

/// The `rule_table` target: each line of the text is looked up as a rule ID (exactly, in any
/// case, and for "did you mean"), a profile and a read mode: a name found is the one asked
/// for, every near rule is a rule, and a name not found gives an error naming every known one.
pub fn check_rule_table(text: &[u8]) {
    for line in String::from_utf8_lossy(text).lines() {
        if let Some(r) = Rule::from_id(line) {
            assert_eq!(r.id(), line, "FUZZ FINDING: from_id gave another rule");
        }
        match Rule::from_id_any_case(line) {
            Some(r) => assert!(
                r.id().eq_ignore_ascii_case(line),
                "FUZZ FINDING: {line:?} is not {r} in any case"
            ),
            None => assert!(Rule::from_id(line).is_none()),
        }
        // Every line, however long: "did you mean" bounds its own work (a word longer than
        // the longest ID and the edit limit is near none, unmeasured).
        let near = Rule::near(line);
        assert!(near.len() <= 5, "FUZZ FINDING: more than five near rules");
        assert!(
            near.windows(2).all(|w| w[0] < w[1]),
            "FUZZ FINDING: near rules unordered"
        );
        match line.parse::<Profile>() {
            Ok(p) => assert_eq!(p.as_str(), line),
            Err(e) => assert!(e.known().contains(&"strict") && !e.to_string().is_empty()),
        }
        match line.parse::<ReadMode>() {
            Ok(m) => assert_eq!(m.as_str(), line),
            Err(e) => assert_eq!(e.known().len(), 3),
        }
    }
    // The table itself: every rule's ID reads back, and its kind, severity and divergence.
    for &r in Rule::ALL {
        assert_eq!(Rule::from_id(r.id()), Some(r));
        assert_eq!(
            Rule::from_id_any_case(&r.id().to_ascii_lowercase()),
            Some(r)
        );
        let _ = (
            r.kind().as_str(),
            r.severity().as_str(),
            r.reference_divergence(),
        );
        assert_eq!(r.is_portable(), r.id().starts_with("PORTABLE-"));
    }
}

/// The `reader_table` target: any text as a reader table (`corpus/readers.json`'s format)
/// loads or is refused with a message, never a panic; a table that loads judges a fixed valid
/// file with every reader, and its special names are the names its misreading rows list.
pub fn check_reader_table(text: &[u8]) {
    let Ok(text) = std::str::from_utf8(text) else {
        return;
    };
    let table = match ReaderTable::from_json(text) {
        Ok(t) => t,
        Err(e) => {
            assert!(
                !e.to_string().is_empty(),
                "FUZZ FINDING: a refusal without a message"
            );
            return;
        }
    };
    for r in table.readers() {
        let _ = (
            r.name(),
            r.package(),
            r.version(),
            r.runtime(),
            r.includes(),
        );
        let _ = table.behaviours_of(r.id());
    }
    for b in table.behaviours() {
        let _ = (
            b.stage(),
            b.scope(),
            b.is_stop(),
            b.rule(),
            b.observed(),
            b.cases(),
        );
        let _ = (b.near_misses(), b.condition().is_index(), b.effect().verb());
    }
    let _ = table.special_names();
    // Choosing readers: none is refused, an unknown one is named, each of the table's loads.
    // (An ID longer than all of the table's together is none of them.)
    let unknown: String = table
        .readers()
        .iter()
        .map(|r| r.id())
        .chain(["?"])
        .collect();
    for ids in [&[][..], &[unknown.as_str()][..]] {
        match Options::readers(&table, ids) {
            Ok(_) => panic!("FUZZ FINDING: readers {ids:?} chosen"),
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
    for r in table.readers() {
        assert!(
            Options::readers(&table, &[r.id()]).is_ok_and(|o| o.chosen().len() == 1),
            "FUZZ FINDING: the table's reader {} cannot be chosen",
            r.id()
        );
    }
    let file = reader_table_probe();
    let report = stcheck::validate(file, &Config::default()).expect("the probe file is valid");
    let answer = portable::check_file(&table, &report, &Options::all(&table));
    assert_eq!(answer.support().len(), table.readers().len());
    for f in answer.findings() {
        assert!(f.rule().is_portable() && f.finding().offset() <= file.len() as u64);
    }
    check_portable_claims(&table, &answer, &report, None);
    check_reader_table_set(&table, &report);
}

/// The shard names of the set a reader table judges: plain, and ones that percent-decode to
/// a parent directory, a control character, a malformed escape, a drive-like prefix.
const SET_SHARDS: [&str; 5] = [
    "model-00001-of-00002.safetensors",
    "%252e%252e%252fup.safetensors",
    "a%01b.safetensors",
    "bad%zz.safetensors",
    "c:model.safetensors",
];

/// A table that loads judges a set: an index naming the table's special names and the probe's
/// tensors across [`SET_SHARDS`], each shard the probe file. The whole set at once
/// ([`portable::check_set`]) and fed shard by shard ([`portable::SetCheck`], as the index
/// checker does) give the same answer; its findings are `PORTABLE-*`, those about a shard name
/// one of the set's shards, those of the index within it.
fn check_reader_table_set(table: &ReaderTable, probe: &Report<'_>) {
    let mut facts = portable::IndexFacts::new();
    let mut offset = 2;
    let names = table
        .special_names()
        .into_iter()
        .take(8)
        .chain(probe.tensors().map(|t| t.name));
    for (i, name) in names.enumerate() {
        facts.push(name, SET_SHARDS[i % SET_SHARDS.len()], offset);
        offset += name.len() as u64 + 40;
    }
    let index_len = offset;
    let units: u64 = facts
        .entries()
        .map(|(t, s, _)| (t.encode_utf16().count() + s.encode_utf16().count()) as u64)
        .sum();
    assert_eq!(facts.utf16_length(), units);
    let shards: Vec<(&str, &Report<'_>)> = SET_SHARDS.iter().map(|&s| (s, probe)).collect();
    let mut options = Options::all(table);
    for refusals_are_errors in [false, true] {
        options.refusals_are_errors = refusals_are_errors;
        let whole = portable::check_set(table, &facts, &shards, &options);
        let mut fed = portable::SetCheck::new(table, &facts, &options);
        for (name, report) in &shards {
            fed.add_shard(name, report);
        }
        assert_eq!(
            fed.finish(),
            whole,
            "FUZZ FINDING: the set fed shard by shard is judged otherwise than whole"
        );
        check_portable_claims(table, &whole, probe, Some(&facts));
        for f in whole.findings() {
            let within = match f.shard() {
                Some(s) => SET_SHARDS.contains(&s) && f.finding().offset() <= probe.file_len(),
                None => f.finding().offset() <= index_len,
            };
            assert!(
                f.rule().is_portable() && within,
                "FUZZ FINDING: set finding {:?} at {} (shard {:?})",
                f.rule(),
                f.finding().offset(),
                f.shard()
            );
        }
    }
}

/// A small valid file with a tensor of each of a few dtypes and a metadata entry, for tables
/// to judge.
fn reader_table_probe() -> &'static [u8] {
    static FILE: OnceLock<Vec<u8>> = OnceLock::new();
    FILE.get_or_init(|| {
        write::serialize(
            &[
                TensorSpec::new("a", Dtype::F64, &[1], &[0u8; 8]),
                TensorSpec::new("b", Dtype::BF16, &[2, 0], &[]),
                TensorSpec::new("w", Dtype::U8, &[1], &[1]),
            ],
            &[("format", "pt")],
        )
        .expect("the probe serializes")
    })
}

/// The `writer` target: tensors and metadata read from the input (tokens split at 0x00: a
/// token starting with 0x01 is a metadata `key=value`; any other token is a tensor's name,
/// followed by a token of dtype byte, rank, one byte per dimension (0xFF: 2^40) and a data
/// length adjustment), written by [`write::serialize`]. The writer refuses what would not be
/// strictly valid: what it writes validates with no warning and reads back the same tensors,
/// data and metadata, and `serialize_to` writes the same bytes; a refusal has a message.
pub fn check_writer(data: &[u8]) {
    let mut model = Model {
        tensors: Vec::new(),
        metadata: Vec::new(),
    };
    let mut tokens = data.split(|&b| b == 0);
    while let Some(token) = tokens.next() {
        if let Some(kv) = token.strip_prefix(&[1]) {
            let kv = String::from_utf8_lossy(kv);
            let (k, v) = kv.split_once('=').unwrap_or((&kv, ""));
            model.metadata.push((k.to_owned(), v.to_owned()));
            continue;
        }
        let name = String::from_utf8_lossy(token).into_owned();
        let spec = tokens.next().unwrap_or_default();
        let dtype = Dtype::ALL[usize::from(spec.first().copied().unwrap_or(0)) % Dtype::ALL.len()];
        let rank = usize::from(spec.get(1).copied().unwrap_or(0) % 5);
        let shape: Vec<u64> = (0..rank)
            .map(|i| match spec.get(2 + i).copied().unwrap_or(1) {
                0xFF => 1 << 40,
                d => u64::from(d % 16),
            })
            .collect();
        let bytes = stcheck::internal::byte_length(dtype, &shape).unwrap_or(0);
        let adjust = spec.get(2 + rank).copied().unwrap_or(0);
        let len = match adjust {
            0xFE => bytes.saturating_add(1),
            0xFD => bytes.saturating_sub(1),
            _ => bytes,
        }
        .min(1 << 16);
        let fill = spec.get(3 + rank).copied().unwrap_or(0);
        model.tensors.push(GenTensor {
            name,
            dtype,
            shape,
            data: vec![fill; len as usize],
        });
    }
    let specs: Vec<TensorSpec<'_>> = model
        .tensors
        .iter()
        .map(|t| TensorSpec::new(&t.name, t.dtype, &t.shape, &t.data))
        .collect();
    let meta: Vec<(&str, &str)> = model
        .metadata
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    match write::serialize(&specs, &meta) {
        Ok(file) => {
            model.assert_reads_back(&file, "writer");
            let mut again = Vec::new();
            write::serialize_to(&mut again, &specs, &meta).expect("a Vec takes the bytes");
            assert_eq!(again, file, "FUZZ FINDING: serialize_to wrote other bytes");
            // A sink that fails part way (a full disk): the error, after a prefix of the file.
            let room = data.len() % (file.len() + 1);
            let mut full = Full {
                taken: Vec::new(),
                room,
            };
            let written = write::serialize_to(&mut full, &specs, &meta);
            assert!(
                written.is_err() == (room < file.len()) && full.taken == file[..full.taken.len()],
                "FUZZ FINDING: serialize_to into a sink of {room} bytes: {written:?}"
            );
        }
        Err(e) => {
            assert!(
                !e.to_string().is_empty(),
                "FUZZ FINDING: a refusal without a message"
            );
            let mut sink = Vec::new();
            assert!(write::serialize_to(&mut sink, &specs, &meta).is_err());
        }
    }
}

/// A sink that takes `room` bytes and then fails, as a full disk does.
struct Full {
    taken: Vec<u8>,
    room: usize,
}

impl Write for Full {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let k = buf.len().min(self.room - self.taken.len());
        if k == 0 && !buf.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::StorageFull,
                "the fuzz sink is full",
            ));
        }
        self.taken.extend_from_slice(&buf[..k]);
        Ok(k)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
