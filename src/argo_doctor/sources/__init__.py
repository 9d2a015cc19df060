"""Sources turn bundles, dumps, loose files and live clusters into a Snapshot."""
