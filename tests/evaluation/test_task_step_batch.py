"""The chunk hook of task-scope steps: by default each task of the chunk goes through
run_task_step; a plug-in may take the chunk whole."""

from evaluation.benchmarks.base import BenchmarkPlugin, Step, TaskInput


class PerTask(BenchmarkPlugin):
    slug = "per-task"
    name = "Per task"

    def __init__(self):
        self.calls = []

    def run_task_step(self, step, task, *, facts):
        self.calls.append(task.task_id)
        return {"length": len(task.data["answer"]), "facts": dict(facts)}


def test_the_default_runs_each_task_of_the_chunk():
    plugin = PerTask()
    step = Step(name="measure", scope="task", label="Measure")
    tasks = [TaskInput("a", {}, {"answer": "xy"}), TaskInput("b", {}, {"answer": "xyz"})]
    found = plugin.run_task_step_batch(step, tasks, facts={"k": 1})
    assert found == {"a": {"length": 2, "facts": {"k": 1}}, "b": {"length": 3, "facts": {"k": 1}}}
    assert plugin.calls == ["a", "b"]
