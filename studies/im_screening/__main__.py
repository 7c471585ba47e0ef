from studies.im_screening.cli import main

raise SystemExit(main())
