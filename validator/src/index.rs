//! Sharded checkpoints: `*.safetensors.index.json` checked as a set.
