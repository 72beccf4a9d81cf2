//go:build !linux

package main

import "context"

func newPacer(ctx context.Context) pacer { return newTimerPacer(ctx) }
