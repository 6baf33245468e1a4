"""Models fitted as a whole: data, model and fit.

* :mod:`vilab.models.nets`: the papers' MLPs and CNNs in plain JAX with a flat parameter vector;
* :mod:`vilab.models.deepglm`: Tan (2025) Sec. 8.4's deep GLMs with a normal-gamma shrinkage prior;
* :mod:`vilab.models.kumar_logistic`: Kumar et al. (2025) Sec. 6's Bayesian logistic regression study.

The hierarchical models (:mod:`vilab.hierarchical`), the CNN experiments (:mod:`vilab.cnn`) and BONG's
online learning (:mod:`vilab.online`) are packages of their own.
"""
