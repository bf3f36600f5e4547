"""Models shipped with the graph level: a CNN trained on scikit-learn's digits, ResNet-18."""
