"""DHP (paper 004): discernment of LLM evaluators by hierarchical perturbation.

perturb: the perturbations (Tables 1 and 2); benchmark: the runs, the scores and the statistics (section 4.3);
survey: the expert-weight survey (Figure 5).
"""
