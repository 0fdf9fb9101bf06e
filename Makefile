# The README's two commands. Both bootstrap .venv on first use (env/bootstrap.sh).
.PHONY: demo test bootstrap shell clean-venv

ARGS ?=

demo:
	@env/bootstrap.sh
	@.venv/bin/labference launch weighing_sim.launch.py $(ARGS)

test:
	@env/bootstrap.sh --test
	@.venv/bin/python -m pytest $(ARGS)

bootstrap:
	@env/bootstrap.sh --test

# A shell with the environment (rclpy, interfaces, loopback-only DDS).
shell:
	@env/bootstrap.sh
	@.venv/bin/labference shell

clean-venv:
	rm -rf .venv build/interfaces
