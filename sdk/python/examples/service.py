"""The analysis and document example services in one Python process:

    REDIS_URL=redis://127.0.0.1:6379/0 python3 -m examples.service

(from sdk/python; TASKFLOW_NAMESPACE as the deployment's). Run the
deployment with TASKFLOW_EXTERNAL_TYPES=data.analyze,document.process
and without `--services` for these types, so this process takes them.
"""

import logging

from taskflow_sdk import Service

from . import analysis, document

if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    svc = Service("python-examples-service", concurrency=8)
    analysis.register(svc)
    document.register(svc)
    svc.run()
