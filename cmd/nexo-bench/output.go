package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-echarts/go-echarts/v2/components"
)

// writeOutputs writes v as indented JSON to jsonPath and the charts with
// text above them to htmlPath; an empty path is skipped.
func writeOutputs(jsonPath, htmlPath string, v any, title, text string, chs []components.Charter) error {
	if jsonPath != "" {
		if err := writeJSON(jsonPath, v); err != nil {
			return err
		}
	}
	if htmlPath != "" {
		if err := os.MkdirAll(filepath.Dir(htmlPath), 0o755); err != nil {
			return err
		}
		f, err := os.Create(htmlPath)
		if err != nil {
			return err
		}
		if err := writeHTML(f, title, text, chs); err != nil {
			f.Close()
			return fmt.Errorf("write %s: %w", htmlPath, err)
		}
		return f.Close()
	}
	return nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func tableText(r *Result) string {
	var b bytes.Buffer
	writeTable(&b, r)
	return b.String()
}

func compareText(c *CompareResult) string {
	var b bytes.Buffer
	writeCompare(&b, c)
	return b.String()
}

func rampText(r *RampResult) string {
	var b bytes.Buffer
	writeRamp(&b, r)
	return b.String()
}
