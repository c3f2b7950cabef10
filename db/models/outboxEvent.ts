import { CreationOptional, DataTypes, InferAttributes, InferCreationAttributes, Model, Sequelize } from 'sequelize';
import type { EventEnvelope } from '../../domain/events';

/** A domain event written in the same transaction as the change it describes. */
export class OutboxEvent extends Model<InferAttributes<OutboxEvent>, InferCreationAttributes<OutboxEvent>> {
  declare id: CreationOptional<number>;
  declare publicId: string;
  declare workspaceId: number;
  declare type: string;
  declare envelope: EventEnvelope;
  declare createdAt: CreationOptional<Date>;
  declare dispatchedAt: CreationOptional<Date | null>;

  static setup(sequelize: Sequelize): void {
    OutboxEvent.init(
      {
        id: { type: DataTypes.BIGINT, autoIncrement: true, primaryKey: true },
        publicId: { type: DataTypes.TEXT, allowNull: false },
        workspaceId: { type: DataTypes.BIGINT, allowNull: false },
        type: { type: DataTypes.TEXT, allowNull: false },
        envelope: { type: DataTypes.JSONB, allowNull: false },
        createdAt: DataTypes.DATE,
        dispatchedAt: DataTypes.DATE,
      },
      { sequelize, tableName: 'outbox_events', underscored: true, updatedAt: false },
    );
  }
}
