"""Paper reproductions, one module per paper; each defines its experiments as module attributes
(``FIG1 = Experiment(...)``), listed by name in :data:`jaxbandits.experiments.BUILTIN`. Importing
this package imports none of them."""
