"""What the tests and the benchmarks share: the server harness (harness), the photos (photos), the
real-photo corpus (corpus), the independent inspector (inspector), the judges of ID photos and mattes
(judge), hostile clients (hostile) and load (load). bench/ imports from here; nothing here imports
bench/."""
