"""The MuJoCo layer of crossdyn: cross-checks, closed loops, results, plots, the CLI.

Its generic API is the front door, :mod:`crossdyn` (``import crossdyn``); this package
re-exports none of it::

    import crossdyn

    report = crossdyn.check_derivation(my_inverse_dynamics, crossdyn.load_model("two_link_arm"))
    print(report.diagnosis)
    report = crossdyn.check_jacobian("my_robot.py:foot_jacobian", "robot.xml", site="foot")
    print(report.text("foot Jacobian"))

One robot's names live in its own package::

    from crossdyn.experiments.biped import balance_recovery
    trace, metrics = balance_recovery(tilt_deg=12, weights={"q_theta": 300})

Layout: :mod:`.core` holds the machinery every system shares (models, ground
truth, the checks, the closed loop, the registry and runner, plots, the command
line); one module or subpackage per system holds its experiments: :mod:`.two_link`,
:mod:`.rnea`, :mod:`.unit_vector`, :mod:`.lagrange`, :mod:`.rigid_box`,
:mod:`.inertia` and the :mod:`.biped` subpackage.
"""
