"""Subcommands of the `aihw` CLI: each module has add_parser(subparsers) and run(args) -> int."""
