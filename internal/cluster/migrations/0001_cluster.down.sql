DROP TABLE IF EXISTS cluster_fires;
DROP TABLE IF EXISTS cluster_leases;
DROP TABLE IF EXISTS cluster_replicas;
