from hedgekit.cli import main

raise SystemExit(main())
