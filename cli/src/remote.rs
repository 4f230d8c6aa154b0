//! Files and sharded sets named by URL: the library's remote source (`stcheck::remote`) checks
//! them with the one checker; this module builds the client from the options and the
//! environment, and lets the CLI compile without the `remote` feature.

#[cfg(feature = "remote")]
mod imp {
    use stcheck::index::ShardOutcome;
    use stcheck::Config;
    use stcheck_gate::remote::{Depth, Remote, RemoteOptions, UrlCheck};

    use super::super::args::Options;

    /// The client of a run: options from the command line and `HF_TOKEN` / `HF_ENDPOINT`.
    pub(crate) fn client(o: &Options) -> Result<Remote, String> {
        let mut opts = RemoteOptions::from_env();
        for (name, value) in &o.headers {
            opts = opts
                .header(name, value)
                .map_err(|e| format!("--header: {e}"))?;
        }
        // One deadline for each URL, whatever its depth: the file with its data, or the
        // set with all its shards.
        if let Some(t) = o.timeout {
            opts.total_timeout = t;
            opts.stream_timeout = Some(t);
        }
        if let Some(path) = &o.ca_file {
            let pem = std::fs::read(path)
                .map_err(|e| format!("--ca-file {}: {e}", stcheck_gate::fs::display_path(path)))?;
            opts = opts.ca_bundle_pem(pem);
        }
        Remote::new(opts).map_err(|e| e.to_string())
    }

    /// Check one address: header-level with range requests, or the whole body streamed when
    /// the configuration reads the data.
    pub(crate) fn check(
        remote: &Remote,
        url: &str,
        config: &Config,
        on_shard: &mut dyn FnMut(&str, ShardOutcome<'_, '_>),
    ) -> UrlCheck {
        let depth = if config.reads_data() {
            Depth::Deep {
                sha256: config.sha256,
            }
        } else {
            Depth::Header
        };
        remote.check_with(url, config, depth, on_shard)
    }
}

#[cfg(not(feature = "remote"))]
mod imp {
    use super::super::args::Options;

    /// Built without the `remote` feature: URLs cannot be checked.
    pub(crate) fn client(_: &Options) -> Result<(), String> {
        Err("this stcheck was built without the `remote` feature: URLs cannot be checked".into())
    }
}

pub(crate) use imp::*;
