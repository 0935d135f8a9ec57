"""citewell as an MCP server: its tools (:mod:`.tools`), the server that offers them
(:mod:`.server`) and the stdio transport ``citewell mcp`` runs (:mod:`.stdio`); ``citewell serve``
mounts the streamable HTTP transport at ``/mcp`` (:mod:`citewell.serve.app`)."""
