"""The host pipeline: datasets, the model zoo, quantisation and measured profiles of this machine."""
