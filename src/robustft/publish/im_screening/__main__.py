from robustft.publish.im_screening.cli import main

raise SystemExit(main())
