"""The code that runs inside the sandbox, shipped into it as files: the supervisor, the drivers
(the crew's pytest run, benchmark scoring, function calls) and what they share (isolation,
handles). Standard library only (and the image's pytest, for the pytest driver); modules import
their siblings by bare name, as they sit side by side in the box.

Nothing imports this package: host code reads its files (``sandbox.protocol.inside_source``).
This file exists only so that the files ship with the installed package.
"""
