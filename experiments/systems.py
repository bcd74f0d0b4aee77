"""crossdyn's own systems, in the order ``crossdyn run`` runs their experiments.

Importing a system's module registers its experiments (``@experiment``).  This
module is what crossdyn's ``pyproject.toml`` names in the ``crossdyn.experiments``
entry-point group, the group any installed package registers its experiments in:
the machinery (:mod:`crossdyn.experiments.core`) never names a system.
"""

from . import (  # noqa: F401 (imported for their registrations)
    cart_pole,
    double_pendulum_cart,
    inertia,
    lagrange,
    pendulum,
    rigid_box,
    rnea,
    showcase,
    two_link,
    two_link_identify,
    unit_vector,
)
from .biped import (  # noqa: F401
    checks,
    control,
    derivations,
    firmware,
    free_hip_control,
    identify,
    tune,
)
