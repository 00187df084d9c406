"""The compiled-optimizer recorder on the real Dynamo and Inductor (CPU):
the guard-text mapping, the identity mapping into capsim's input order, and
one program end to end (SGD with momentum: a traced event, two compiles, the
state guard). Skipped without torch; takes a few seconds.
"""

import importlib.util
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

HAVE_TORCH = importlib.util.find_spec("torch") is not None


@unittest.skipUnless(HAVE_TORCH, "needs torch")
class OptimizerRecorderTest(unittest.TestCase):
    def test_recompile_reason(self):
        from capsim_recorder.optimizer.fields import recompile_reason

        self.assertEqual(recompile_reason(["self.param_groups[0]['params'][1].grad is not None"]),
                         "grad_none_guard")
        self.assertEqual(recompile_reason(["len(self.state[list(dict.keys(self.state))[0]]) != 0"]),
                         "optimizer_state_guard")
        self.assertEqual(recompile_reason(["___check_obj_id(L['x'], 1)"]), "guard_failure")

    def test_step_compile_fields(self):
        from capsim_recorder.optimizer.fields import step_compile_fields

        mapping = {0: 0, 1: 1, 2: 2}
        self.assertEqual(step_compile_fields("opt", [True, True], [0, 1], mapping),
                         {"function": "opt.step", "static_input_idxs": [0, 1]})
        # Only params 0 and 2 have a grad: step_params says which, for explain.
        self.assertEqual(step_compile_fields("opt", [True, False, True], [0], mapping),
                         {"function": "opt.step[0, 2]", "static_input_idxs": [0], "step_params": [0, 2]})

    def test_capsim_order(self):
        import torch

        from capsim_recorder.optimizer.fields import capsim_order

        lin = torch.nn.Linear(2, 2)
        opt = torch.optim.SGD(lin.parameters(), lr=0.1, momentum=0.9)
        lin(torch.ones(1, 2)).sum().backward()
        opt.step()  # makes the buffers
        w, b = lin.weight, lin.bias
        bufs = [opt.state[p]["momentum_buffer"] for p in (w, b)]
        # Inductor's order is its own; capsim's is params, grads, state.
        self.assertEqual(capsim_order(opt, "sgd", [bufs[1], w.grad, 3, b, w, b.grad, bufs[0]]),
                         {0: 5, 1: 2, 3: 1, 4: 0, 5: 3, 6: 4})
        self.assertIsNone(capsim_order(opt, "sgd", [torch.ones(1)]))

    def test_sgd_momentum_program(self):
        from capsim_recorder.optimizer.recorder import record_optimizer_program
        from capsim_recorder.program_runs import load

        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.jsonl")
            record_optimizer_program(load(("optimizer",))["compiled_sgd_momentum"], path)
            lines = [json.loads(line) for line in open(path, encoding="utf-8")]
        self.assertEqual(lines[0]["observes"], ["optimizer", "compile", "zero_grad"])
        events = [(e["event"], e.get("reason"), e.get("static_input_idxs"), e.get("static_state"))
                  for e in lines if e["type"] == "event" and e["event"] != "zero_grad"]
        self.assertEqual(events, [
            ("optimizer", None, None, None),
            ("optimizer", None, None, 0),
            ("compile", None, [0, 1], None),
            ("compile", "optimizer_state_guard", None, None),
            ("compile", None, [0, 1, 4, 5], None),
        ])


if __name__ == "__main__":
    unittest.main()
