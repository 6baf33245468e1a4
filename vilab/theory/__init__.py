"""The papers' theory, one module per subject: guarantees, stability limits, positive definiteness, SNNGM's
bound, ELBO fields, gradient flows, discretisation, and the estimators' variance."""
