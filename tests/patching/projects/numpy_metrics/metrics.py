"""Evaluation metrics computed with NumPy, as the repository's reporting code does."""

import numpy as np


def confusion_matrix(predictions, labels, classes):
    table = np.zeros((classes, classes), dtype=np.int64)
    np.add.at(table, (labels.numpy(), predictions.numpy()), 1)
    return table
