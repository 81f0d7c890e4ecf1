"""Deployments of the code location beyond one process: ``codegen/deploy/docker`` (one host,
containers).

Plain Python, no Dagster imports: the images are built with the Docker SDK, the stack is run
by docker-compose. See README.md, "Deployment in containers".
"""
