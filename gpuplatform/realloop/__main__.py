import sys

from gpuplatform.realloop.run import main

sys.exit(main())
