from reprobench.cli import main

raise SystemExit(main())
