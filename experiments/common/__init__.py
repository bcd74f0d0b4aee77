"""What two or more systems share: each module here is imported by several systems and imports none.

A system (``experiments/NAME.py`` or ``experiments/NAME/``) imports the machinery
(:mod:`crossdyn.experiments.core`), the hand layers, its own package and these
modules, never another system (tests/test_architecture.py holds it).
"""
