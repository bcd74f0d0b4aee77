"""The wheel-legged biped's controllers: its balance, steering, legs and jump (:mod:`.controller` combines
them), its state estimator, the free-hip model's controller, and the same as one compiled step and as C
firmware (``firmware/``)."""
