"""``python -m hedgekit``: the command line (`hedgekit.cli`)."""
try:
    from hedgekit.cli import main
except KeyboardInterrupt:  # Ctrl-C while torch is still importing: nothing had started, so nothing to keep
    import sys

    print("interrupted while starting up; nothing was run or written", file=sys.stderr)
    raise SystemExit(130) from None

raise SystemExit(main())
