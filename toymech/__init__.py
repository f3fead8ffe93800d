"""toymech: train toy transformers on synthetic tasks and look inside them.

Data flows one way: task -> config -> model -> training -> zoo -> analysis -> plots -> notebook.
"""

__version__ = "0.1.0"
