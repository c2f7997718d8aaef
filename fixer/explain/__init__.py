"""The explain path, in the order a paste flows through it: text -> Traceback -> Evidence -> Match.

read (repair what pasting did) -> parse (find the traceback) -> normalise (placeholders for what
varies) -> evidence (devices, argument, op, libraries; detectors' facts about the code) -> match
(signatures, similarity, rules, priors) -> narrow (questions when causes are close). It imports
neither torch nor LibCST: `fixer explain` stays fast.
"""
