package cluster

import "testing"

func TestBatchInput(t *testing.T) {
	job := func(input string, array *ArrayTask) *Job {
		return &Job{ID: 42, Array: array, Spec: Spec{Name: "train", User: "ann", WorkDir: "/home/ann",
			Batch: &Batch{Script: "#!/bin/sh\n", Input: input}}}
	}
	for _, tt := range []struct {
		name string
		job  *Job
		want string
	}{
		{"default", job("", nil), "/dev/null"},
		{"none", job("NONE", nil), "/dev/null"},
		{"relative", job("in/%x-%j.%N.txt", nil), "/home/ann/in/train-42.n1.txt"},
		{"absolute", job("/data/%u/%4j", nil), "/data/ann/0042"},
		{"array", job("in_%A_%a", &ArrayTask{JobID: 40, TaskID: 2}), "/home/ann/in_40_2"},
		{"not batch", &Job{ID: 1}, ""},
	} {
		if got := tt.job.BatchInput("n1"); got != tt.want {
			t.Errorf("%s: BatchInput = %q; want %q", tt.name, got, tt.want)
		}
	}
}
