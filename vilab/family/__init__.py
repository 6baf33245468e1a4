"""What q is: the Gaussian-family protocol and its members, and the arithmetic of Gaussians.

* :mod:`vilab.family.dense`: the protocol (:class:`GaussianFamilyProtocol`) and its dense members,
  :class:`GaussianFamily` (dense or diagonal Cholesky factors of Sigma or of Sigma^-1, or Sigma itself;
  Tan (2025)) and :class:`MomentFamily` (BONG's (mu, Sigma) beliefs);
* :mod:`vilab.family.block`: :class:`BlockPrecFamily`, arrow or banded block factors of the precision
  (Tan (2025) Thm 4; Chen, Nott & Tan Sec. 4);
* :mod:`vilab.family.lowrank`: :class:`DLRPrecFamily`, diagonal-plus-low-rank precisions (BONG's dlr-R);
* :mod:`vilab.family.gaussian`: the parameterizations of N(mu, Sigma) (mean/covariance, Cholesky charts,
  natural and expectation parameters), conversions, KL, log-density;
* :mod:`vilab.family.natgrad`: natural and Euclidean gradients of the ELBO in every chart (Tan (2025)
  Thms 1, 2 and 4, Table 1; Tan (explicit)), and the brute-force Fisher blocks they are checked against;
* :mod:`vilab.family.linalg`: Magnus & Neudecker's operators (vech, duplication and elimination matrices);
* :mod:`vilab.family.quadrature`: Gauss-Hermite nodes and Stroud's rule for expectations under N(0, I).
"""

from .dense import GaussianFamily, GaussianFamilyProtocol, MomentFamily
from .block import BlockPrecFamily, Structure
from .lowrank import DLRPrecFamily

__all__ = ["GaussianFamilyProtocol", "GaussianFamily", "MomentFamily", "BlockPrecFamily", "Structure", "DLRPrecFamily"]
