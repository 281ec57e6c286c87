"""Gateway role, transparency: every profile's fields and methods come through a proxy unchanged.

Where things are: `common.py` (fixture lookup by listed name, the wire check), one module per profile
(`preprocessor_tools.py`, `execution_requirements.py`, `context_middleware.py`, `augmentation.py`: each
profile's driver and checks; the last two share `methods.py`), `record.py` (recording through the
gateway). This module keeps the names other code imports.
"""

from ..judging import find_named
from .common import listed_name
from .launch import gateway_factory
from .record import PROFILES, record_gateway, record_gateway_sync

__all__ = ["PROFILES", "gateway_factory", "record_gateway", "record_gateway_sync", "find_named", "listed_name"]
