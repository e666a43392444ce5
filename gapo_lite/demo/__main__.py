"""``python -m gapo_lite.demo``: the same job as ``gapo-lite demo``."""
from gapo_lite.demo.run import main

raise SystemExit(main())
