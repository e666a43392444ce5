"""Every private name of an upstream package that gapo-lite uses, one module per package: :mod:`.trl`,
:mod:`.transformers`, :mod:`.unsloth`.

Each module states the version it was read from and lists what it relies on; its ``missing()`` names what the
installed version no longer has (``tests/test_upstream.py`` fails with that list). Nothing else in gapo-lite
touches a private name of these packages. Importing this package imports none of them.
"""
