//! Deep scan of tensor data (`--deep`): BOOL bytes, non-finite counts, SHA-256, polyglots.
