# The two commands a person needs: `make test` and `make demo`.
# Both install the Debian packages first (scripts/install-deps).
BUILD ?= build
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc)

.PHONY: deps configure build test demo clean

deps:
	./scripts/install-deps

configure: deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# The OTLP decoder (OpenTelemetry's own, from npm) validates our payloads;
# without the registry its test skips rather than fails.
test: build
	-./scripts/install-otlp-decoder $(BUILD)/otlp-decoder
	ctest --test-dir $(BUILD) -j $(JOBS) --output-on-failure --timeout 600

# The demo writes a Perfetto trace unless GLASSBOX_TRACE_FILE says otherwise.
DEMO_TRACE ?= $(BUILD)/glassbox-demo-trace.json
demo: build
	@trace="$${GLASSBOX_TRACE_FILE:-$(DEMO_TRACE)}"; \
	echo "glassbox-demo: Perfetto trace -> $$trace (open it at https://ui.perfetto.dev)"; \
	GLASSBOX_TRACE_FILE="$$trace" $(BUILD)/bin/glassbox-demo $(DEMO_ARGS)

clean:
	rm -rf $(BUILD)
