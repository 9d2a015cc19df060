"""The Model Context Protocol server (`argo-doctor mcp`): read-only tools over one input, answered by the same engine
and reporters as the command line, redacted and bounded in size. `session` holds the input, `tools` answers each
tool, `paging` keeps results within the cap, `server` puts them on the SDK and its transports."""
