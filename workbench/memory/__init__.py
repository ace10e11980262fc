"""Memory-aware execution: layer graphs, MASA multi-DNN layer scheduling and FlexNN slicing with
preload-aware planning (NumPy only; Keras is needed just to convert a model)."""
