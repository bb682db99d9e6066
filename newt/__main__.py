from newt.cli import main

raise SystemExit(main())
