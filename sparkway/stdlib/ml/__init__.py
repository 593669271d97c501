"""``pw.ml`` (``pw.stdlib.ml``): nearest-neighbour search (``index.KNNIndex``), k-NN
classification (``classifiers``), fuzzy matching of tables (``smart_table_ops``) and
decoding of hidden Markov models (``hmm``), built from the public table API."""

from sparkway.stdlib.ml import classifiers, hmm, index, smart_table_ops, utils

__all__ = ["classifiers", "hmm", "index", "smart_table_ops", "utils"]
