from studio.app import main

raise SystemExit(main())
