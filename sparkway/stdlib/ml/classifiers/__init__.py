"""``pw.ml.classifiers``: k nearest neighbours by LSH, and classification by them."""

from sparkway.stdlib.ml.classifiers._knn_lsh import (
    DistanceTypes, knn_lsh_classifier_train, knn_lsh_classify, knn_lsh_euclidean_classifier_train,
    knn_lsh_generic_classifier_train,
)

knn_lsh_train = knn_lsh_classifier_train

__all__ = [
    "DistanceTypes", "knn_lsh_classifier_train", "knn_lsh_classify", "knn_lsh_euclidean_classifier_train",
    "knn_lsh_generic_classifier_train", "knn_lsh_train",
]
