package worker

// placeholder replaced by the SIGKILL test below
const childEnv = "TASKFLOW_WORKER_CHILD"

func runChild() int { return 2 }
