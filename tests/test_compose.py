from __future__ import annotations

import numpy as np

from app.pipelines.compose import cutout, flatten, resize_alpha, working_size
