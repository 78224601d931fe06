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

demo: build
	$(BUILD)/bin/glassbox-demo

clean:
	rm -rf $(BUILD)
