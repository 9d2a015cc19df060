"""Derivations over a Snapshot that several analyzers share: node clock offsets (`clock`), webhook
configurations and their call failures (`webhooks`), and what an Application's `ignoreDifferences`
covers (`ignore_differences`). Facts read only the Snapshot; they never import an analyzer, a
reporter or the command line."""
