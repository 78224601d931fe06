#!/usr/bin/env python3
"""docker/otel-collector.yaml as far as it can be checked without a collector:
it parses; it uses only standard components of the core distribution; every
pipeline names components that are defined, and every defined one is used;
OTLP/HTTP comes in on 4318, traces go to Jaeger over OTLP and metrics to a
Prometheus exporter that keeps glassbox's names; and docker-compose.yml runs
it in the `collector` profile with this file mounted, Prometheus scraping
what it exports."""
import pathlib
import sys
import unittest

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
CONFIG = ROOT / "docker" / "otel-collector.yaml"
COMPOSE = ROOT / "docker" / "docker-compose.yml"

# Component types of otel/opentelemetry-collector (the core distribution)
# that this file may use: receivers, processors, exporters, extensions.
STANDARD = {
    "receivers": {"otlp"},
    "processors": {"batch", "memory_limiter"},
    "exporters": {"otlp", "otlphttp", "prometheus", "prometheusremotewrite", "debug"},
    "extensions": {"health_check"},
}


def component_type(name):
    return name.split("/", 1)[0]  # "otlphttp/jaeger" is an otlphttp exporter named jaeger


class OtelCollectorConfig(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.config = yaml.safe_load(CONFIG.read_text())
        cls.compose = yaml.safe_load(COMPOSE.read_text())

    def test_only_standard_components(self):
        for kind, allowed in STANDARD.items():
            for name in self.config.get(kind) or {}:
                self.assertIn(component_type(name), allowed, f"{kind}.{name} is not a core-distribution component")
        unknown = set(self.config) - set(STANDARD) - {"service"}
        self.assertFalse(unknown, f"unknown top-level sections: {unknown}")

    def test_pipelines_name_defined_components_and_every_one_is_used(self):
        pipelines = self.config["service"]["pipelines"]
        self.assertEqual(set(pipelines), {"traces", "metrics"})
        used = {kind: set() for kind in ("receivers", "processors", "exporters")}
        for name, pipeline in pipelines.items():
            for kind in used:
                for component in pipeline.get(kind, []):
                    self.assertIn(component, self.config.get(kind) or {}, f"pipeline {name}: {kind} {component} undefined")
                    used[kind].add(component)
            self.assertTrue(pipeline.get("receivers") and pipeline.get("exporters"), f"pipeline {name} is not whole")
        for kind, names in used.items():
            self.assertEqual(set(self.config.get(kind) or {}), names, f"{kind} defined but not used")

    def test_otlp_http_in_traces_to_jaeger_metrics_to_prometheus(self):
        http = self.config["receivers"]["otlp"]["protocols"]["http"]
        self.assertTrue(http["endpoint"].endswith(":4318"))
        pipelines = self.config["service"]["pipelines"]
        self.assertIn("otlp", pipelines["traces"]["receivers"])
        self.assertIn("otlp", pipelines["metrics"]["receivers"])
        [traces_out] = pipelines["traces"]["exporters"]
        self.assertEqual(component_type(traces_out), "otlphttp")
        self.assertEqual(self.config["exporters"][traces_out]["endpoint"], "http://jaeger:4318")
        [metrics_out] = pipelines["metrics"]["exporters"]
        prometheus = self.config["exporters"][metrics_out]
        self.assertEqual(component_type(metrics_out), "prometheus")
        self.assertIs(prometheus["add_metric_suffixes"], False, "suffixes would rename glassbox's series")
        self.assertTrue(prometheus["endpoint"].endswith(":8889"))
        # memory_limiter must come first to refuse data before the batch holds it.
        for pipeline in pipelines.values():
            self.assertEqual(pipeline["processors"][0], "memory_limiter")

    def test_compose_runs_it_in_the_collector_profile_and_prometheus_scrapes_it(self):
        services = self.compose["services"]
        collector = services["otel-collector"]
        self.assertEqual(collector["profiles"], ["collector"])
        self.assertTrue(any(v.startswith("./otel-collector.yaml:") for v in collector["volumes"]))
        pushers = [s for s in services.values() if (s.get("environment") or {}).get("OTEL_METRICS_EXPORTER") == "otlp"]
        self.assertTrue(pushers, "no service pushes its metrics to the collector")
        for s in pushers:
            self.assertEqual(s["environment"]["OTEL_EXPORTER_OTLP_ENDPOINT"], "http://otel-collector:4318")
            self.assertIn("service.instance.id=", s["environment"]["OTEL_RESOURCE_ATTRIBUTES"])
        targets = yaml.safe_load((ROOT / "docker" / "prometheus-collector-targets.yml").read_text())
        self.assertEqual(targets[0]["targets"], ["otel-collector:8889"])
        self.assertTrue(any(v.startswith("./prometheus-collector-targets.yml:") for v in services["prometheus"]["volumes"]))
        scrape = yaml.safe_load((ROOT / "dashboards" / "prometheus" / "prometheus.yml").read_text())
        [job] = [j for j in scrape["scrape_configs"] if j["job_name"] == "otel-collector"]
        self.assertIs(job["honor_labels"], True, "the pushing processes' job and instance would be renamed")


if __name__ == "__main__":
    sys.exit(unittest.main())
