"""DBToaster's AGgregate CAlculus (AGCA; ../shared/papers/dbtoaster-vldbj14.md Section 3): expressions
(expr.py), binding patterns (schema.py), the paper's notation (printer.py), a reference evaluator
over generalized multiset relations with exact rational multiplicities (evaluate.py), and deltas
(delta.py). The higher-order strategy (issue 14) compiles views into this calculus; the tests use
the evaluator as the semantic ground truth."""
