from newt.cli.main import main

raise SystemExit(main())
