"""The `roost` command line: one table of subcommands over the composition root."""
