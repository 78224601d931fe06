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

# The demo prints its live page's URL first (/ of the metrics port), and
# writes a Perfetto trace unless GLASSBOX_TRACE_FILE says otherwise (its
# banner names the file).
DEMO_TRACE ?= $(BUILD)/glassbox-demo-trace.json
demo: build
	@GLASSBOX_TRACE_FILE="$${GLASSBOX_TRACE_FILE:-$(DEMO_TRACE)}" $(BUILD)/bin/glassbox-demo $(DEMO_ARGS)

clean:
	rm -rf $(BUILD)
